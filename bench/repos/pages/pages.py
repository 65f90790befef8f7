def page_count(items, per_page=10):
    """How many pages `items` results fill, `per_page` to a page (a part-filled page counts)."""
    if items <= 0:
        return 0
    return (items + per_page) // per_page


def page_of(index, per_page=10):
    """The page (from 1) that the result at `index` (from 0) is shown on."""
    return index // per_page + 1
