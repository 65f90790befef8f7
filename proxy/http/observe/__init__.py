"""Observation: what a request did, recorded, and made into logs, metrics and spans."""
