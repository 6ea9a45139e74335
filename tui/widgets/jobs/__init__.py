"""The Jobs tab (job-directory scans)."""
