"""The REST client the product writes with: HTTP pool, response reader, API writes, events."""
