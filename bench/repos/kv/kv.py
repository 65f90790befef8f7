def parse(text):
    """'a=1;b=2' -> {'a': '1', 'b': '2'}"""
    pairs = {}
    for item in text.split(","):
        key, _, value = item.partition("=")
        pairs[key.strip()] = value.strip()
    return pairs
