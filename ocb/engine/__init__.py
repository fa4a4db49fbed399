"""The runtime maths of a brain: embedding, search, the route policy, traversal,
learning rules and the route model. Pure functions of their inputs; nothing here
records."""
