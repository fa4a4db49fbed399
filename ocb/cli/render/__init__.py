"""Text and JSON rendering of what the brain's commands return, one module per concern;
``encode`` turns result structs into JSON (msgspec builtins, then one compact line)."""
