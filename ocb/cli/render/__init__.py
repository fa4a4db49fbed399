"""Text and JSON rendering of what the brain's commands return."""
