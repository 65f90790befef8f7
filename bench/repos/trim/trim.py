ELLIPSIS = "..."


def shorten(text, width=12):
    """`text` as it is when it fits in `width` characters, else cut to fit with ELLIPSIS at the end."""
    if len(text) < width:
        return text
    return text[: width - len(ELLIPSIS)] + ELLIPSIS
