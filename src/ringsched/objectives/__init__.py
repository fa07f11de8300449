"""Objectives: utilities of a job's completion time (design brief, section 3)."""
