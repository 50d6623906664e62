"""Files that ``reinforge init`` writes, kept as text templates (see ``starter``)."""
