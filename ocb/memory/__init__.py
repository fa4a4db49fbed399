"""Typed memory: retain, recall, reflect, the knowledge graph and dates."""
