"""The human text of what the brain's commands return, one module per concern (their
JSON objects are ``ocb.wire``'s, shared with the daemon and its clients)."""
