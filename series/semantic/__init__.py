"""The semantic check: upstream names a topic's code uses that a clean rebase removed, and the readers it needs."""
