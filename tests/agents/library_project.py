"""The SQLite lending library (authors, books, members, loans) with its own query log: a project shaped
unlike the demo, built by ``build_library`` (the conftest scans, bootstraps and ingests it)."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from pathlib import Path

from khive.scaffold import init_project

LIBRARY_CONFIG = """\
version: 1
name: lending-library
connections:
  library:
    driver: sqlite
    path: data/library.sqlite
    description: "the branch library: books, members and loans"
    historicSql: {enabled: true, queryLog: data/queries.jsonl, minExecutions: 3}
"""

LIBRARY_SCHEMA = """\
CREATE TABLE authors (id INTEGER PRIMARY KEY, full_name TEXT NOT NULL, country TEXT NOT NULL);
CREATE TABLE books (id INTEGER PRIMARY KEY, title TEXT NOT NULL, author_id INTEGER NOT NULL REFERENCES authors(id),
                    genre TEXT NOT NULL, pages INTEGER NOT NULL);
CREATE TABLE members (id INTEGER PRIMARY KEY, membership TEXT NOT NULL, joined_on TEXT NOT NULL);
CREATE TABLE loans (id INTEGER PRIMARY KEY, book_id INTEGER NOT NULL REFERENCES books(id),
                    member_id INTEGER NOT NULL REFERENCES members(id), borrowed_on TEXT NOT NULL,
                    returned_on TEXT, late_fee REAL NOT NULL DEFAULT 0);
"""

GENRES = ("crime", "fantasy", "history", "poetry", "science")
QUERIES = (
    ("SELECT b.genre, count(*) FROM loans l JOIN books b ON b.id = l.book_id WHERE l.borrowed_on >= '{d}' "
     "GROUP BY b.genre", 9),
    ("SELECT m.membership, sum(l.late_fee) FROM loans l JOIN members m ON m.id = l.member_id "
     "WHERE l.returned_on IS NULL GROUP BY m.membership", 6),
    ("SELECT title, pages FROM books WHERE author_id = {n}", 5),
    ("SELECT a.country, count(*) FROM books b JOIN authors a ON a.id = b.author_id GROUP BY a.country", 4),
)


def build_library(root: Path) -> None:
    init_project(root, "librarian")
    (root / "khive.yaml").write_text(LIBRARY_CONFIG, encoding="utf-8")
    (root / "data").mkdir(exist_ok=True)
    db = sqlite3.connect(root / "data" / "library.sqlite")
    db.executescript(LIBRARY_SCHEMA)
    db.executemany("INSERT INTO authors VALUES (?, ?, ?)",
                   [(i, f"Author {i}", ("NL", "DE", "FR", "PL")[i % 4]) for i in range(1, 21)])
    db.executemany("INSERT INTO books VALUES (?, ?, ?, ?, ?)",
                   [(i, f"Book {i}", 1 + i % 20, GENRES[i % 5], 90 + i % 400) for i in range(1, 301)])
    db.executemany("INSERT INTO members VALUES (?, ?, ?)",
                   [(i, ("adult", "student", "senior")[i % 3], f"2024-{1 + i % 12:02d}-01") for i in range(1, 121)])
    db.executemany("INSERT INTO loans VALUES (?, ?, ?, ?, ?, ?)",
                   [(i, 1 + i % 300, 1 + i % 120, f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}",
                     None if i % 7 == 0 else "2025-12-30", 0.5 * (i % 4)) for i in range(1, 2001)])
    db.commit()
    db.close()
    start = dt.datetime(2026, 11, 1, 9, tzinfo=dt.UTC)
    with (root / "data" / "queries.jsonl").open("w", encoding="utf-8") as log:
        for index, (template, times) in enumerate(QUERIES):
            for run in range(times):
                sql = template.format(d=f"2025-{1 + run % 12:02d}-01", n=1 + run)
                log.write(json.dumps({"sql": sql, "user": f"analyst{run % 3}", "duration_ms": 40 + run,
                                      "started_at": (start + dt.timedelta(hours=index * 10 + run)).isoformat(),
                                      "rows": 5, "error": None}) + "\n")
