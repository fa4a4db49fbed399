"""The graph commands, one module each: its ``decide_*`` (state + command -> events)
and the service that records the decision."""
