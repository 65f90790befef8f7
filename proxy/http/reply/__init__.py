"""The reply stage: the model's reply read, judged, and answered as its decision table says."""
