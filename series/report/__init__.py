"""What a rebase tells the user: its typed result, and the upstream change to read first before resolving."""
