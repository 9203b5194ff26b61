"""The PR's life after posting: its state, whose turn it is, what upstream did next."""
