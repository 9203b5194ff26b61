"""The PR's life after posting: whose turn it is, the gates, the quiet clock, the stored fetch."""
