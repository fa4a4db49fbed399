"""The doctor's checks of a brain and of its typed memory, and the repair of a damaged
log."""
