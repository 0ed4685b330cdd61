"""The semantic layer pack: sources, search, dictionary, bootstrap, dbt import, compiled metric queries."""
