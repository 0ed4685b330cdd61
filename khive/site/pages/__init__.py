"""One module per kind of page; ``routes`` maps every site path to the function that renders it."""
