"""CNN performance calculator: ``streamlit run app.py``.

This file only declares the pages; each page draws the shared sidebar (``ui.state.page``) and lays out numbers from
``core``. Nothing here imports torch, so the first page appears fast.
"""

import streamlit as st

PAGES = {
    "CNN performance calculator": [
        st.Page("pages/0_Layers.py", title="Layers", url_path="layers", default=True),
        st.Page("pages/1_Roofline.py", title="Roofline", url_path="Roofline"),
        st.Page("pages/2_Estimates.py", title="Estimates", url_path="Estimates"),
        st.Page("pages/3_Devices.py", title="Devices", url_path="Devices"),
        st.Page("pages/4_Network.py", title="Network", url_path="Network"),
        st.Page("pages/5_Benchmark.py", title="Benchmark", url_path="Benchmark"),
        st.Page("pages/6_Compare.py", title="Compare", url_path="Compare"),
    ],
    "Course": [st.Page("pages/7_Course_labs.py", title="Course labs", url_path="Course_labs")],
}

st.navigation(PAGES, expanded=True).run()
