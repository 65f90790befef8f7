"""The HTTP layer (aiohttp): the application, the request pipeline, forwarding and relaying,
the reply gates, the admin API and status page, metrics and logs.

    pipeline: authenticate -> read -> analyse (with memory) -> holdout | hand-back | gate | forward
"""
