"""The HTTP layer (aiohttp), in folders by job, each importing only its own and the ones before it:

observe    what a request did: its typed record (`Outcome`, the events), and the one observer
           that turns the finished record into log lines, metrics and spans
runtime    what a request runs under: teams and their engines, the caches, TLS, the typed keys
upstream   sending to the upstream, every way that fails, relaying its answer, the proxy's own replies
reply      the reply stage: the model's reply read, judged and answered as its decision table says
pipeline   one request: check, authenticate, read, analyse (with memory), choose
serving    the application, its routes, the admin API, reload, the worker set

pipeline: authenticate -> read -> analyse (with memory) -> holdout | hand-back | reply stage | forward
"""
