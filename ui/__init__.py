"""Streamlit helpers shared by every page: session state, the sidebar, cached calls into ``core``."""
