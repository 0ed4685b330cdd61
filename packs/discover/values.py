"""Values that stand for the table or column holding them: "films in French" asks for ``language``,
"suppliers in Europe" for ``region``, "customers in Germany" for a ``country`` column, "horror movies" for
``category``. No table is named after a value, so without this the word counts nothing and the table that
holds it is left to the join structure.

Each class is a few nouns a schema names such a table or column with, and the values are general knowledge
(countries, the languages and nationalities spoken of them, continents, US states, genres of films and
music, genders, colours, pets), written for khive, not taken from any schema or benchmark. A value reaches
its class nouns at ``forms.VALUE`` (the first, the next ones a little less: "French" is a language before
a nationality), below a synonym: it hints where the value is kept, it is not the thing itself. Ambiguous
words are left out (``turkey``, ``chad``, ``jordan``, ``country`` music, ``pop`` for population, ``action``).
"""

from __future__ import annotations

from functools import lru_cache

from khive.index.morph import key

COUNTRY = ("country", "nation", "nationality")
LANGUAGE = ("language", "nationality", "country", "nation")  # "French" is a language and a nationality
REGION = ("region", "continent")
STATE = ("state", "province")
GENRE = ("genre", "category")
GENDER = ("gender", "sex")
COLOR = ("color", "colour")
ANIMAL = ("pet", "animal", "species", "breed")

COUNTRIES = """
afghanistan albania algeria andorra angola argentina armenia australia austria azerbaijan bahamas bahrain
bangladesh barbados belarus belgium belize benin bhutan bolivia bosnia botswana brazil brunei bulgaria burundi
cambodia cameroon canada chile china colombia congo croatia cuba cyprus czechia czech denmark djibouti ecuador
egypt eritrea estonia eswatini ethiopia fiji finland france gabon gambia germany ghana greece grenada guatemala
guinea guyana haiti honduras hungary iceland india indonesia iran iraq ireland israel italy jamaica japan
kazakhstan kenya kiribati korea kosovo kuwait kyrgyzstan laos latvia lebanon lesotho liberia libya
liechtenstein lithuania luxembourg madagascar malawi malaysia maldives mali malta mauritania mauritius mexico
micronesia moldova monaco mongolia montenegro morocco mozambique myanmar namibia nauru nepal netherlands
holland nicaragua niger nigeria norway oman pakistan palau palestine panama paraguay peru philippines poland
portugal qatar romania russia rwanda samoa senegal serbia seychelles singapore slovakia slovenia somalia
spain sudan suriname sweden switzerland syria taiwan tajikistan tanzania thailand togo tonga tunisia
turkmenistan tuvalu uganda ukraine uruguay usa uk uzbekistan vanuatu venezuela vietnam yemen zambia zimbabwe
england scotland wales britain
"""
LANGUAGES = """
english french german spanish italian portuguese dutch swedish norwegian danish finnish icelandic polish czech
slovak hungarian romanian bulgarian greek turkish russian ukrainian serbian croatian arabic hebrew persian
farsi hindi bengali urdu punjabi tamil chinese mandarin cantonese japanese korean vietnamese thai indonesian
malay filipino tagalog swahili irish welsh scottish british american canadian mexican brazilian argentinian
australian indian african european asian egyptian nigerian kenyan moroccan peruvian chilean colombian
venezuelan cuban belgian swiss austrian latin esperanto
"""
CONTINENTS = "europe asia africa america americas oceania antarctica australasia eurasia scandinavia"
STATES = """
alabama alaska arizona arkansas california colorado connecticut delaware florida hawaii idaho illinois
indiana iowa kansas kentucky louisiana maine maryland massachusetts michigan minnesota mississippi missouri
montana nebraska nevada ohio oklahoma oregon pennsylvania tennessee texas utah vermont virginia wisconsin
wyoming ontario quebec alberta bavaria
"""
GENRES = """
jazz blues rock metal reggae punk hiphop rap classical opera soundtrack techno disco folk gospel funk
horror comedy comedies drama dramas thriller thrillers documentary documentaries romance romantic animation
animated cartoon musical musicals fantasy scifi mystery crime biography adventure war sports anime
"""
GENDERS = "male female males females men women man woman boys girls"
COLORS = "red blue green yellow black white orange purple brown grey gray pink silver gold beige"
ANIMALS = "dog dogs cat cats puppy kitten hamster rabbit parrot horse horses"


@lru_cache(maxsize=1)
def _classes() -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for words, nouns in ((COUNTRIES, COUNTRY), (LANGUAGES, LANGUAGE), (CONTINENTS, REGION), (STATES, STATE),
                         (GENRES, GENRE), (GENDERS, GENDER), (COLORS, COLOR), (ANIMALS, ANIMAL)):
        for word in words.split():
            out.setdefault(key(word), nouns)
    return out


def classes(word: str) -> tuple[str, ...]:
    """The nouns a schema names the holder of the value ``word`` with (none for a word that is no value)."""
    return _classes().get(key(word), ())
