"""Serving: the application, its routes, the admin API, reload, the worker set."""
