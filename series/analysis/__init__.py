"""Read-only analyses of the series: touches (paths, matrix, overlaps, forecast)."""
