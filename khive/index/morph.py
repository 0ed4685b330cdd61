"""Identifier morphology: the words an identifier stands for, and the forms a question's word can take.

Schemas spell words in ways a question never does: ``NumTstTakr``, ``salesorderheader``, ``cust_amt``,
``AvgScrRead``. At index time an identifier becomes its words: camelCase, digit and separator splits, long
lower-case runs segmented into dictionary words (``salesorderheader`` -> sales order header), short runs that
are no word split in two known pieces (``custid`` -> cust id, ``isopen`` -> is open), and the
abbreviations of a small table written for khive expanded (``qty`` -> quantity). At query time a word
also reaches the identifier tokens that abbreviate it (``takr`` for takers: first letter kept, letters in
order), derived forms (``payment`` for pay), adjacent words written together (``highschooler``) and a
few synonyms. Every table here is general English and data vocabulary, not any benchmark's names.

The dictionary for segmentation is the word list that ships inside the ``wordninja`` wheel (English
Wikipedia unigrams by frequency), read once; the splitting itself is a minimal-cost split written here.
"""

from __future__ import annotations

import gzip
import importlib.util
import math
import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

_CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_SEPARATOR_RE = re.compile(r"[^A-Za-z0-9]+")
SEGMENT_MIN = 7  # shorter runs are left whole: ``orders`` must not become "or ders"
PART_MIN = 2  # every segment has at least this many letters
COMMON_RANK = 4000  # a token this frequent is a word of its own, never read as an abbreviation
WHOLE_RANK = 60000  # a run that is itself a word this frequent is never split (invoice, salesperson)
SHORT_RANK = 200  # two-letter words allowed as segments: of, by, to, in, on, ...
ABBREVIATION_RANK = 5000  # the cost the abbreviations below get as segments
PAIR_MIN = 4  # a shorter run than SEGMENT_MIN splits in two (``custid``) only from this length
PAIR_RANK = 5000  # ... and only into known abbreviations and words at least this frequent

# Abbreviations that schemas use, each with the word(s) it stands for.
ABBREVIATIONS: dict[str, tuple[str, ...]] = {
    "acct": ("account",), "accts": ("accounts",), "addr": ("address",), "adj": ("adjusted",), "amt": ("amount",),
    "amnt": ("amount",), "appt": ("appointment",), "approx": ("approximate",), "attr": ("attribute",),
    "avg": ("average",), "bal": ("balance",), "bday": ("birthday",), "bldg": ("building",), "cat": ("category",),
    "cnt": ("count",), "ct": ("count",), "co": ("company",), "comm": ("commission",), "cond": ("condition",),
    "cust": ("customer",), "cty": ("city",), "cnty": ("county",), "ctry": ("country",), "curr": ("currency",),
    "cur": ("current",), "dt": ("date",), "dte": ("date",), "dob": ("birth", "date"), "del": ("deleted",),
    "dept": ("department",), "dep": ("department",), "desc": ("description",), "descr": ("description",),
    "dest": ("destination",), "dist": ("distance",), "div": ("division",), "doc": ("document",),
    "dur": ("duration",), "emp": ("employee",), "empl": ("employee",), "enrl": ("enrollment",),
    "est": ("estimated",), "exp": ("expense",), "ext": ("extended",), "fname": ("first", "name"),
    "freq": ("frequency",), "fy": ("fiscal", "year"), "grp": ("group",), "hr": ("hour",), "hrs": ("hours",),
    "ht": ("height",), "id": ("identifier",), "img": ("image",), "inv": ("invoice", "inventory"),
    "lat": ("latitude",), "lng": ("longitude",), "lon": ("longitude",), "len": ("length",), "lname": ("last", "name"),
    "loc": ("location",), "lvl": ("level",), "max": ("maximum",), "mgr": ("manager",), "mfg": ("manufacturing",),
    "mfr": ("manufacturer",), "mgmt": ("management",), "mkt": ("market",), "mo": ("month",), "mon": ("month",),
    "mth": ("month",), "msg": ("message",), "nbr": ("number",), "no": ("number",), "nr": ("number",),
    "num": ("number",), "org": ("organization",), "pct": ("percent",), "perc": ("percent",), "pmt": ("payment",),
    "pymt": ("payment",), "pop": ("population",), "pos": ("position",), "prc": ("price",), "prev": ("previous",),
    "prod": ("product",), "pts": ("points",), "qty": ("quantity",), "qtr": ("quarter",), "rcpt": ("receipt",),
    "rec": ("record",), "ref": ("reference",), "reg": ("region",), "rep": ("representative",), "rev": ("revenue",),
    "sched": ("schedule",), "scr": ("score",), "sec": ("second",), "seq": ("sequence",), "sku": ("product",),
    "src": ("source",), "std": ("standard",), "stmt": ("statement",), "stu": ("student",), "sub": ("subscription",),
    "supp": ("supplier",), "svc": ("service",), "sz": ("size",), "tel": ("telephone",), "temp": ("temperature",),
    "tkt": ("ticket",), "tot": ("total",), "trans": ("transaction",), "trx": ("transaction",),
    "ts": ("timestamp",), "tst": ("test",), "txn": ("transaction",), "tx": ("transaction",), "univ": ("university",),
    "usr": ("user",), "val": ("value",), "ver": ("version",), "vol": ("volume",), "wh": ("warehouse",),
    "wk": ("week",), "wt": ("weight",), "yr": ("year",), "yrs": ("years",), "ytd": ("year", "to", "date"),
    "takr": ("taker",), "takrs": ("takers",), "apt": ("apartment",), "ave": ("avenue",), "blvd": ("boulevard",),
    "intl": ("international",), "natl": ("national",), "govt": ("government",), "info": ("information",),
    "admin": ("administrator",), "conf": ("conference",), "prof": ("professor",), "instr": ("instructor",),
    "sem": ("semester",), "elev": ("elevation",), "alt": ("altitude",), "precip": ("precipitation",),
    "km": ("kilometer",), "kg": ("kilogram",), "lbs": ("pounds",), "sal": ("salary",), "pwd": ("password",),
    "crs": ("course",),
    # two letters that data naming uses for one of few words (``StNm``, ``zip_cd``, ``cust_ph``)
    "nm": ("name",), "cd": ("code",), "ph": ("phone",), "st": ("state", "street"),
}
# Words people use for the same thing; a question's word also reaches the others (weaker than itself).
SYNONYMS: tuple[tuple[str, ...], ...] = (
    ("customer", "client", "buyer", "purchaser", "shopper", "consumer"),
    ("employee", "staff", "worker", "personnel"),
    ("supplier", "vendor", "provider"),
    ("product", "merchandise", "sku"),
    ("revenue", "sales", "income", "turnover", "earnings"),
    ("sale", "sell", "sold"),
    ("buy", "bought", "purchase"),
    ("pay", "paid", "payment"),
    ("spend", "spent", "spending"),
    ("film", "movie"),
    ("track", "song", "tune"),
    ("artist", "musician", "band", "singer", "performer"),
    ("student", "pupil", "learner"),
    ("instructor", "teacher", "professor", "lecturer"),
    ("school", "college", "university"),
    ("city", "town"),
    ("country", "nation"),
    ("state", "province"),
    ("region", "territory"),
    ("phone", "telephone"),
    ("email", "mail"),
    ("salary", "wage", "compensation"),
    ("manager", "supervisor", "boss"),
    ("company", "firm", "organization", "enterprise"),
    ("vehicle", "car", "automobile"),
    ("shipper", "carrier", "courier"),
    ("freight", "shipping"),
    ("discount", "rebate", "markdown"),
    ("invoice", "bill", "billing"),
    ("category", "genre"),
    ("rating", "stars"),
    ("review", "feedback"),
    ("quantity", "qty"),
    ("average", "mean", "avg"),
    ("price", "cost", "fee"),
    ("doctor", "physician"),
    ("player", "athlete"),
    ("team", "club", "squad"),
    ("birthday", "birth", "born", "dob"),
    ("rental", "rent", "hire", "lease"),
    ("stock", "inventory"),
    ("job", "occupation"),
    ("department", "dept"),
    ("author", "writer"),
    ("paper", "publication", "article"),
    ("conference", "venue"),
    ("picture", "photo", "image"),
)
# Derivational endings: ``pay`` reaches ``payment``, ``rent`` reaches ``rental``.
DERIVED_ENDINGS = ("ment", "ments", "al", "als", "er", "ers", "or", "ors", "ee", "ees", "ion", "ions", "ation",
                   "ations", "ing", "ings", "ity", "ness", "ship", "age", "ance", "ence", "ant", "ent", "ive",
                   "ure")  # plural, -ed and -ing forms are one key already (``key``); -y is a different word
_IRREGULAR = {"people": "person", "persons": "person", "children": "child", "men": "man", "women": "woman",
              "feet": "foot", "teeth": "tooth", "mice": "mouse", "geese": "goose", "indices": "index",
              "matrices": "matrix", "criteria": "criterion", "data": "data", "media": "media", "analyses": "analysis"}
# British spellings schemas use (``eye_colour_id``, ``centre_name``) keyed as the American ones questions
# often use, and the reverse: one key for both.
_SPELLINGS = {"colour": "color", "favourite": "favorite", "centre": "center", "metre": "meter", "litre": "liter",
              "theatre": "theater", "fibre": "fiber", "calibre": "caliber", "organisation": "organization",
              "licence": "license", "defence": "defense", "offence": "offense", "behaviour": "behavior",
              "catalogue": "catalog", "programme": "program", "grey": "gray", "jewellery": "jewelry", "tyre": "tire",
              "aluminium": "aluminum", "neighbour": "neighbor", "labour": "labor", "honour": "honor",
              "harbour": "harbor", "flavour": "flavor", "humour": "humor", "rumour": "rumor", "cheque": "check",
              "kilometre": "kilometer", "millimetre": "millimeter", "centimetre": "centimeter",
              "enrolment": "enrollment", "travelling": "traveling", "cancelled": "canceled", "modelling": "modeling",
              "labelled": "labeled"}
# Irregular past forms of content verbs analysts ask with ("who taught", "items sold"): the key of the
# verb, so they reach its derived nouns and synonyms as the present form does (teach -> teacher ->
# instructor). Light verbs (took, made, gave, got) are left alone: "courses taken" is not about taking.
_IRREGULAR_VERBS = {"taught": "teach", "bought": "buy", "sold": "sell", "paid": "pay", "spent": "spend",
                    "wrote": "write", "written": "write", "built": "build", "sent": "send", "won": "win",
                    "led": "lead", "flew": "fly", "flown": "fly", "chose": "choose", "chosen": "choose",
                    "drove": "drive", "driven": "drive", "grew": "grow", "grown": "grow", "sang": "sing",
                    "sung": "sing", "rode": "ride", "ridden": "ride", "wore": "wear", "worn": "wear",
                    "lent": "lend"}


@lru_cache(maxsize=1)
def _dictionary() -> tuple[dict[str, int], dict[str, float], int]:
    """(word -> frequency rank, word -> split cost, longest word) from the list inside the wordninja wheel."""
    spec = importlib.util.find_spec("wordninja")  # its data only: the module itself is never imported
    try:
        if spec is None or spec.origin is None:
            raise OSError("wordninja is not installed")
        path = Path(spec.origin).parent / "wordninja" / "wordninja_words.txt.gz"
        listed = gzip.decompress(path.read_bytes()).decode().split()
    except OSError:  # without the list, identifiers are split on case and separators only
        listed = []
    rank = {word: i for i, word in enumerate(listed)}
    log_n = math.log(max(len(listed), 2))
    # two-letter pieces only as function words (bill-of-materials) or known abbreviations (dt, id)
    cost = {word: math.log((i + 1) * log_n) for word, i in rank.items()
            if len(word) > PART_MIN or (len(word) == PART_MIN and i < SHORT_RANK)}
    for abbreviation in ABBREVIATIONS:  # so ``availqty`` splits as avail + qty, ``salesytd`` as sales + ytd
        cost[abbreviation] = min(cost.get(abbreviation, math.inf), math.log(ABBREVIATION_RANK * log_n))
    return rank, cost, max((len(w) for w in cost), default=0)


def word_rank(word: str) -> int | None:
    """The frequency rank of an English word (0 is the most frequent), None for a non-word."""
    return _dictionary()[0].get(word)


@lru_cache(maxsize=65536)
def segment(token: str) -> tuple[str, ...]:
    """A lower-case run as dictionary words (``billofmaterials`` -> bill, of, materials), or itself.

    A minimal-cost split (cost: log of frequency rank), kept only when it has more than one part and its
    parts are cheaper than the run read as one word. A run shorter than SEGMENT_MIN splits only in two known
    pieces (``_pair``)."""
    rank, cost, longest = _dictionary()
    if not token.isalpha() or rank.get(token, WHOLE_RANK) < WHOLE_RANK:
        return (token,)
    if len(token) < SEGMENT_MIN:
        return _pair(token, rank)
    n = len(token)
    best: list[tuple[float, int]] = [(0.0, 0)] + [(math.inf, 0)] * n
    for end in range(1, n + 1):
        for start in range(max(0, end - longest), end - PART_MIN + 1):
            piece = cost.get(token[start:end])
            if piece is not None and best[start][0] + piece < best[end][0]:
                best[end] = (best[start][0] + piece, start)
    if math.isinf(best[n][0]):
        return (token,)
    parts: list[str] = []
    end = n
    while end > 0:
        start = best[end][1]
        parts.append(token[start:end])
        end = start
    parts.reverse()
    whole = cost.get(token)
    if len(parts) < 2 or (whole is not None and whole <= best[n][0]):
        return (token,)
    return tuple(parts)


def _pair(token: str, rank: dict[str, int]) -> tuple[str, ...]:
    """A short run that is no word, as two known pieces (``custid`` -> cust, id; ``isopen`` -> is, open;
    ``empno`` -> emp, no): each piece a known abbreviation or a common word. Of several cuts, the one with
    more abbreviations (``userid`` is user + id, not use + rid), then the one whose rarer piece is commoner."""
    if len(token) < PAIR_MIN or token in ABBREVIATIONS or token in rank:  # a word of its own (coupon) stays
        return (token,)
    best: tuple[int, int, int] | None = None  # (-abbreviations, rarer piece's rank, cut)
    for cut in range(PART_MIN, len(token) - PART_MIN + 1):
        pieces = (token[:cut], token[cut:])
        ranks = [rank.get(p) for p in pieces]
        if not all(p in ABBREVIATIONS or (r is not None and r < (SHORT_RANK if len(p) <= PART_MIN else PAIR_RANK))
                   for p, r in zip(pieces, ranks, strict=True)):
            continue
        choice = (-sum(p in ABBREVIATIONS for p in pieces), max(r if r is not None else PAIR_RANK for r in ranks), cut)
        best = choice if best is None else min(best, choice)
    return (token,) if best is None else (token[: best[2]], token[best[2]:])


def split_identifier(name: str) -> list[str]:
    """Lower-case words on case, digit and separator boundaries: ``AvgScrRead`` -> avg, scr, read."""
    out: list[str] = []
    for part in _SEPARATOR_RE.split(name):
        out.extend(word.lower() for word in _CAMEL_RE.findall(part))
    return out


@lru_cache(maxsize=65536)
def identifier_words(name: str) -> tuple[str, ...]:
    """Every word an identifier stands for, in order and distinct: its pieces, their segments and the
    expansions of its abbreviations (``NumTstTakr`` -> num, tst, takr, number, test, taker)."""
    out: list[str] = []
    pieces = [(part, part.islower()) for raw in _SEPARATOR_RE.split(name) for part in _CAMEL_RE.findall(raw)]
    for raw, lower in pieces:
        piece = raw.lower()
        out.append(piece)
        # a capitalised piece was delimited by its author (``InvoiceLine``): split only lower-case runs
        parts = segment(piece) if lower or len(pieces) == 1 else (piece,)
        if len(parts) > 1:
            out.extend(parts)
        for part in parts:
            out.extend(ABBREVIATIONS.get(part, ()))
    return tuple(dict.fromkeys(out))


@lru_cache(maxsize=65536)
def key(word: str) -> str:
    """A comparison key: plural, -ing and -ed endings stripped, a final e and a doubled consonant
    dropped, so invoice ~ invoiced, ship ~ shipped, categories ~ category, people ~ person."""
    w = word.lower()
    if w in _IRREGULAR:
        return _IRREGULAR[w]
    if w in _IRREGULAR_VERBS:
        return key(_IRREGULAR_VERBS[w])
    spelled = _SPELLINGS.get(w[:-1] if w.endswith("s") and w[:-1] in _SPELLINGS else w)
    if spelled is not None:
        return key(spelled)
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 5 and w.endswith(("ches", "shes", "sses", "xes", "zes")):
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    elif len(w) > 5 and w.endswith("ing"):
        w = w[:-3]
    elif len(w) > 4 and w.endswith("ed") and not w.endswith("eed"):
        w = w[:-2]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    if len(w) > 3 and w[-1] == "y" and w[-2] not in "aeiouy":  # movies ~ movie, cities ~ city: one key
        w = w[:-1] + "i"
    return w


def keys(words: Iterable[str]) -> set[str]:
    return {key(word) for word in words}


@lru_cache(maxsize=1)
def _synonyms() -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    for group in SYNONYMS:
        for word in group:
            out.setdefault(key(word), []).extend(other for other in group if other != word)
    return {k: tuple(dict.fromkeys(v)) for k, v in out.items()}


@lru_cache(maxsize=65536)
def synonyms(word: str) -> tuple[str, ...]:
    """The words of ``word``'s synonym group; a verb reaches the group of the noun derived from it
    ("who teaches" -> teacher -> instructor, "manages" -> manager -> supervisor)."""
    table, base = _synonyms(), key(word)
    found = table.get(base)
    if found is not None:
        return found
    nouns = [k for k in table if derived(base, k)]
    return tuple(dict.fromkeys(w for k in nouns for w in (k, *table[k])))


def _skeleton(word: str) -> str:
    """The consonants of a word in order, doubled ones once (``quantity`` -> qnty)."""
    out = ""
    for ch in word:
        if ch not in "aeiou" and (not out or out[-1] != ch):
            out += ch
    return out


def _in_order(short: str, word: str) -> bool:
    letters = iter(word)
    return all(ch in letters for ch in short)


def abbreviates(short: str, word: str) -> bool:
    """Whether ``short`` reads as an abbreviation of ``word``: a prefix of it (at least its first letter)
    followed by consonants of the rest in order, the first of them the rest's first consonant (``takr``,
    ``tst``, ``cnty``, ``scr``, ``dept``, ``avg``), shorter than the word and not itself a common word
    (``art`` never stands for apartment, ``bin`` not for business)."""
    if not (3 <= len(short) < len(word)) or short[0] != word[0] or not short.isalpha():
        return False
    rank = word_rank(short)
    if rank is not None and rank < COMMON_RANK:
        return False
    for cut in range(1, len(short)):
        if short[:cut] != word[:cut]:
            break
        rest, tail = _skeleton(word[cut:]), short[cut:]
        if tail[0] == rest[:1] and _in_order(tail, rest):
            return True
    return short == word[: len(short)]


def derived(base: str, word: str) -> bool:
    """Whether ``word`` is ``base`` plus a derivational ending (pay -> payment, rent -> rental)."""
    if len(base) < 3 or not word.startswith(base):
        return False
    rest = word[len(base):]
    if rest[:1] == base[-1] and base[-1] not in "aeiou":  # ship -> shipper, plan -> planned
        rest = rest[1:]
    return rest in DERIVED_ENDINGS
