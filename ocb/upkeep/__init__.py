"""Keeping a brain in shape outside the request path: maintenance, weight and structure
operations, health, blob regeneration and forgetting."""
