"""The read scope: what a user may read (their own documents, and what collections they own or belong to
share with them), as SQL every query that lists, ranks or hydrates documents, chunks or collections puts in its
WHERE clause. The one place that decides readability; the documents domain owns the tables, this package
only reads them."""
