"""The job report: every rank's summary merged (python -m gpuslack merge)."""
