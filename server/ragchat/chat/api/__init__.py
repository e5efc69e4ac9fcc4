"""The HTTP doors of chat: the page's threads and SSE, `/api/rag`, `/v1`, message actions (thin adapters)."""
