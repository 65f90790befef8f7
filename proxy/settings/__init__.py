"""Settings: the config file, the repair policy and the enums every layer shares.

The bottom layer: it imports nothing else of the proxy. Files are parsed once into frozen
typed objects; every error names its file and key.
"""
