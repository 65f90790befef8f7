from slug import slugify


def test_slugify_lowercases():
    assert slugify("Hello World!") == "hello-world"


def test_slugify_keeps_digits():
    assert slugify("top 10 tips") == "top-10-tips"
