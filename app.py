"""CNN performance calculator: ``streamlit run app.py``.

This file only declares the pages (``views/``); each page opens with ``ui.state.page()`` (config, the shared sidebar,
title) and lays out numbers from ``core``. Nothing here imports torch, so the first page appears fast. The folder is
not called ``pages/``: Streamlit would also treat that name as an old-style page folder of its own.
"""

import streamlit as st

PAGES = {
    "CNN performance calculator": [
        st.Page("views/layers.py", title="Layers", url_path="layers", default=True),
        st.Page("views/graph.py", title="Graph", url_path="Graph"),
        st.Page("views/roofline.py", title="Roofline", url_path="Roofline"),
        st.Page("views/estimates.py", title="Estimates", url_path="Estimates"),
        st.Page("views/devices.py", title="Devices", url_path="Devices"),
        st.Page("views/network.py", title="Network", url_path="Network"),
        st.Page("views/benchmark.py", title="Benchmark", url_path="Benchmark"),
        st.Page("views/compare.py", title="Compare", url_path="Compare"),
    ],
    "Course": [st.Page("views/course_labs.py", title="Course labs", url_path="Course_labs")],
}

st.navigation(PAGES, expanded=True).run()
