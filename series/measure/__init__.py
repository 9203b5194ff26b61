"""A workload measured against predictions frozen first: predictions, the measurement, its report, tables, jobs, comment."""
