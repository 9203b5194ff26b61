"""One module per verb; each exposes run(...) taking its collaborators as arguments."""
