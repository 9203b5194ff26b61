"""The write path: the transaction's changes all or none, the journal (the op log), the halt record, the state dir."""
