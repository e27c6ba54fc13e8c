"""`plan`: capacity and cost of a stack, from the planner."""
