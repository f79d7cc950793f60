"""Reading an AppTest run the way the page tests do: open a page (no exception), a metric by label, a table by
column (AppTest does not expose a dataframe's key)."""

from streamlit.testing.v1 import AppTest


def open_page(path: str, timeout: int = 120) -> AppTest:
    at = AppTest.from_file(path, default_timeout=timeout).run()
    assert not at.exception, at.exception
    return at


def metric(at, label):
    return next(m.value for m in at.metric if m.label == label)


def table(at, column):
    """The first dataframe with ``column``."""
    return next(d.value for d in at.dataframe if column in d.value.columns)
