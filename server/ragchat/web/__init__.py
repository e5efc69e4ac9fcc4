"""HTTP concerns shared by every route: browser protections, the API docs page."""
