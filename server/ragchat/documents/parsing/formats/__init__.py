"""One module per file format. Each parser has the signature `(data, stem, limits, deadline) -> ParsedDocument`,
builds on the shared model (`parsing.document`) and text helpers (`parsing.text`) and nothing private, and runs
under the same `ParseLimits`; `parsing.parsers` is the one registry that maps an extension to its parser.
Sections of transcripts, tables, slides and e-books carry a `location` (see `Section`)."""
