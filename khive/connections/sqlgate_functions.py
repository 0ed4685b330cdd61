"""Function lists for the read-only SQL gate (``sqlgate``): what is refused, what is known to be safe.

Three lists, all lower-case and matched against the bare function name (``pg_catalog.pg_read_file``
is ``pg_read_file``):

* ``DENIED``: glob patterns of functions that read the server's files, reach other servers, write
  (sequences, large objects, transaction ids), change the session, signal the server, sleep, take
  locks, or run SQL text the gate cannot inspect. Each pattern carries the reason shown to the agent.
  Applied to every dialect, and to functions sqlglot types as well as to unknown ones.
* ``ALLOWED``: functions that sqlglot does not type (it parses them as ``exp.Anonymous``) but that
  are ordinary read-only analytics: the unknown-function rule would otherwise refuse them.
  Names sqlglot already types need not be listed; listing them does no harm.
* ``SERVER_STATE``: relations and table functions that show other sessions' statement text, locks,
  the server's settings or stored credentials. Over MCP they are refused by name in any schema
  (``public.pg_stat_statements`` too, where the extension was installed in ``public``); the
  operator's CLI may read them. Not liftable by ``allow_functions``: grant them to a role instead
  (ADR 0032). BigQuery's and Snowflake's job and query history are matched only under
  ``INFORMATION_SCHEMA`` / ``ACCOUNT_USAGE``, since ``jobs`` or ``sessions`` are common table names.
"""

from __future__ import annotations

from fnmatch import fnmatchcase


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


_SERVER_FILES = "reads or writes files on the database server"
_FILE_READERS = "reads files or URLs; query warehouse tables, not the server's filesystem or remote storage"
_LARGE_OBJECTS = "reads or writes large objects (server-side files)"
_REMOTE = "opens a connection to another server"
_CONFIG = "changes session or server configuration"
_SEQUENCES = "advances or sets a sequence, which is a write"
_XACT = "assigns or exports a transaction id or snapshot, which is a write"
_LOCKS = "takes advisory locks"
_ADMIN = "signals or administers the database server"
_SQL_TEXT = "runs SQL text that the gate cannot inspect"
_SLEEP = "sleeps; the agent's time is better spent elsewhere"
_EXTENSIONS = "loads native code or writes the database file"

DENIED: dict[str, str] = {
    # PostgreSQL: server files and large objects
    "pg_read_file": _SERVER_FILES, "pg_read_binary_file": _SERVER_FILES, "pg_ls_*": _SERVER_FILES,
    "pg_stat_file": _SERVER_FILES, "pg_file_*": _SERVER_FILES, "pg_logdir_ls": _SERVER_FILES,
    "lo_*": _LARGE_OBJECTS, "loread": _LARGE_OBJECTS, "lowrite": _LARGE_OBJECTS,
    # connections to other servers
    "dblink*": _REMOTE, "http_*": _REMOTE, "external_query": _REMOTE,
    "postgres_*": _REMOTE, "mysql_*": _REMOTE, "sqlite_scan": _REMOTE, "sqlite_attach": _REMOTE,
    # session and server configuration
    "set_config": _CONFIG, "pg_reload_conf": _CONFIG, "pg_rotate_logfile": _CONFIG,
    "pg_log_backend_memory_contexts": _CONFIG, "pg_stat_reset*": _CONFIG, "pg_stat_statements_reset": _CONFIG,
    "pg_import_system_collations": _CONFIG, "set_variable": _CONFIG,
    # writes hidden in function calls
    "nextval": _SEQUENCES, "setval": _SEQUENCES, "next_value_for": _SEQUENCES,
    "txid_current": _XACT, "pg_current_xact_id": _XACT, "pg_export_snapshot": _XACT,
    "pg_advisory_*": _LOCKS, "pg_try_advisory_*": _LOCKS,
    "pg_terminate_backend": _ADMIN, "pg_cancel_backend": _ADMIN, "pg_promote": _ADMIN, "pg_switch_wal": _ADMIN,
    "pg_create_*": _ADMIN, "pg_drop_replication_slot": _ADMIN, "pg_copy_*": _ADMIN, "pg_replication_*": _ADMIN,
    "pg_logical_*": _ADMIN, "pg_wal_replay_*": _ADMIN, "pg_backup_*": _ADMIN, "pg_start_backup": _ADMIN,
    "pg_stop_backup": _ADMIN, "pg_notify": _ADMIN, "checkpoint": _ADMIN, "force_checkpoint": _ADMIN,
    "system$*": _ADMIN,  # Snowflake SYSTEM$WAIT, SYSTEM$CANCEL_QUERY, SYSTEM$ABORT_SESSION, ...
    # SQL text executed out of the gate's sight
    "query_to_xml*": _SQL_TEXT, "cursor_to_xml*": _SQL_TEXT, "ts_stat": _SQL_TEXT, "ts_rewrite": _SQL_TEXT,
    "query": _SQL_TEXT, "query_table": _SQL_TEXT,
    "pg_sleep_for": _SLEEP, "pg_sleep_until": _SLEEP,  # pg_sleep itself has its own rule (see sqlgate)
    # DuckDB file and URL readers (also reachable as FROM 'file.csv', refused separately)
    "read_*": _FILE_READERS, "parquet_*": _FILE_READERS, "sniff_csv": _FILE_READERS,
    "iceberg_*": _FILE_READERS, "delta_scan": _FILE_READERS, "st_read*": _FILE_READERS,
    "getenv": "reads the server's environment", "duckdb_secrets": "lists stored credentials",
    "which_secret": "lists stored credentials", "load_aws_credentials": "loads credentials",
    "to_file": _FILE_READERS,  # Snowflake TO_FILE(stage URL)
    # SQLite extensions and the fileio/zipfile helpers
    "load_extension": _EXTENSIONS, "readfile": _SERVER_FILES, "writefile": _SERVER_FILES, "edit": _SERVER_FILES,
    "fsdir": _SERVER_FILES, "zipfile": _SERVER_FILES, "fts3_tokenizer": _EXTENSIONS, "sqlite_dbpage": _EXTENSIONS,
}

# Denied in one dialect only: SQLite's glob(pattern, text) is a string match, DuckDB's lists files; MySQL's
# sleep() and benchmark() hold a connection busy, load_file() reads the server's files.
DENIED_BY_DIALECT: dict[str, dict[str, str]] = {
    "duckdb": {"glob": _FILE_READERS},
    "mysql": {"load_file": _SERVER_FILES, "sleep": _SLEEP, "benchmark": _SLEEP, "get_lock": _LOCKS,
              "release_lock": _LOCKS, "release_all_locks": _LOCKS, "is_free_lock": _LOCKS, "is_used_lock": _LOCKS,
              "master_pos_wait": _SLEEP, "source_pos_wait": _SLEEP, "master_gtid_wait": _SLEEP,
              "wait_for_executed_gtid_set": _SLEEP, "sys_exec": _ADMIN, "sys_eval": _ADMIN},
}

_COMMON = _names("""
    abs acos acosh asin asinh atan atan2 atanh cbrt ceil ceiling cos cosh cot degrees div exp floor ln log
    log10 log2 mod pi power pow radians random round sign sin sinh sqrt tan tanh trunc truncate width_bucket
    factorial gcd lcm isnan isinf isfinite
    coalesce nullif greatest least ifnull nvl nvl2 iff iif decode zeroifnull nullifzero equal_null
    avg count count_if countif max min sum stddev stddev_pop stddev_samp variance var_pop var_samp
    corr covar_pop covar_samp regr_avgx regr_avgy regr_count regr_intercept regr_r2 regr_slope regr_sxx
    regr_sxy regr_syy median mode percentile_cont percentile_disc approx_count_distinct approx_percentile
    approx_quantile approx_top_k any_value arg_max arg_min argmax argmin max_by min_by bool_and bool_or
    every bit_and bit_or bit_xor kurtosis skewness skew entropy product listagg string_agg group_concat
    array_agg array_unique_agg logical_and logical_or first last first_value last_value nth_value lag lead
    row_number rank dense_rank percent_rank cume_dist ntile ratio_to_report grouping grouping_id
    ascii chr char concat concat_ws format initcap left length len char_length character_length
    octet_length bit_length lower upper lpad rpad ltrim rtrim btrim trim position strpos instr
    repeat replace reverse right split_part substr substring translate starts_with startswith ends_with
    endswith contains md5 sha1 sha2 sha256 to_hex hex unhex quote_ident quote_literal quote_nullable
    regexp_replace regexp_match regexp_matches regexp_split_to_array regexp_split_to_table regexp_count
    regexp_instr regexp_like regexp_substr regexp_extract regexp_extract_all regexp_contains rlike
    levenshtein soundex similarity editdistance jaro_winkler_similarity jarowinkler_similarity
    damerau_levenshtein hamming string_split str_split split string_to_array array_to_string
    age date_trunc date_part datepart extract to_char to_date to_timestamp to_number make_date make_time
    make_timestamp make_timestamptz make_interval justify_days justify_hours justify_interval date_bin
    now clock_timestamp statement_timestamp transaction_timestamp localtimestamp localtime timeofday
    current_date current_time current_timestamp date_add date_sub date_diff datediff dateadd timediff
    timestampdiff timestampadd last_day next_day previous_day dayname monthname year quarter month week
    weekofyear day dayofmonth dayofweek dayofyear hour minute second epoch epoch_ms strftime strptime
    time_bucket convert_timezone timezone to_varchar try_cast try_to_number try_to_date try_to_timestamp
    cast
    array_length array_position array_positions array_remove array_cat array_append array_prepend
    array_upper array_lower array_dims cardinality unnest generate_series generate_subscripts
    array_contains array_size array_slice array_distinct array_sort list_value list_contains list_sort
    list_distinct list_aggregate flatten array_construct array_compact arrays_overlap element_at
    json_extract json_extract_path json_extract_path_text jsonb_extract_path jsonb_extract_path_text
    json_extract_scalar json_extract_string json_value json_query json_array_length jsonb_array_length
    json_typeof jsonb_typeof json_type json_valid json_object json_array json_build_object
    jsonb_build_object json_build_array jsonb_build_array json_agg jsonb_agg json_object_agg
    jsonb_object_agg to_json to_jsonb json_array_elements jsonb_array_elements json_array_elements_text
    jsonb_array_elements_text json_each jsonb_each json_each_text jsonb_each_text json_object_keys
    jsonb_object_keys jsonb_path_query jsonb_path_exists json_keys parse_json try_parse_json
    row_to_json array_to_json jsonb_pretty jsonb_strip_nulls
    currval lastval typeof pg_typeof format_type num_nulls num_nonnulls version hash
    current_database current_schema current_user session_user
""")

ALLOWED: dict[str, frozenset[str]] = {
    "postgres": _COMMON | _names("""
        to_tsvector to_tsquery plainto_tsquery phraseto_tsquery websearch_to_tsquery ts_rank ts_rank_cd
        ts_headline setweight int4range int8range numrange daterange tsrange tstzrange isempty
        lower_inc upper_inc range_merge array_fill string_to_table unistr normalize pg_size_pretty
        pg_total_relation_size pg_relation_size pg_table_size pg_indexes_size pg_database_size
        obj_description col_description pg_get_viewdef pg_get_constraintdef txid_current_if_assigned
        pg_current_xact_id_if_assigned txid_current_snapshot pg_current_snapshot json_to_record
        json_to_recordset jsonb_to_record jsonb_to_recordset json_populate_record json_populate_recordset
        jsonb_populate_record jsonb_populate_recordset jsonb_set jsonb_insert to_regclass unaccent xmlagg
    """),
    "duckdb": _COMMON | _names("""
        range list histogram quantile quantile_cont quantile_disc reservoir_quantile fsum favg sum_no_overflow
        list_slice list_filter list_transform list_reduce list_sum list_avg list_min list_max list_count
        list_unique list_has list_has_any list_has_all list_concat list_extract list_element array_value
        struct_pack struct_extract struct_insert map map_keys map_values map_entries map_extract
        regexp_full_match prefix suffix jaccard bar printf isodow isoyear yearweek era century decade
        millisecond microsecond today current_localtimestamp get_current_time epoch_us epoch_ns
        make_timestamp_ms to_days to_hours to_minutes to_seconds to_months to_years to_weeks hash
        json_extract_path json_transform json_structure json_serialize_sql unnest generate_series
        pragma_table_info pragma_storage_info duckdb_tables duckdb_columns duckdb_views duckdb_constraints
    """),
    "sqlite": _COMMON | _names("""
        date time datetime julianday unixepoch timediff printf total likelihood likely unlikely quote
        unicode char zeroblob randomblob json json_quote json_group_array json_group_object json_patch
        json_remove json_set json_insert json_replace json_tree json_each changes total_changes
        last_insert_rowid sqlite_version sqlite_source_id glob like pragma_table_info pragma_table_xinfo
        pragma_index_list pragma_index_info pragma_foreign_key_list
    """),
    "mysql": _COMMON | _names("""
        date_format str_to_date from_unixtime unix_timestamp curdate curtime utc_date utc_time utc_timestamp
        sysdate makedate maketime period_add period_diff sec_to_time time_to_sec to_days from_days to_seconds
        weekday yearweek time_format get_format convert_tz addtime subtime adddate subdate extract
        json_unquote json_contains json_contains_path json_search json_length json_depth json_keys json_overlaps
        json_pretty json_quote json_arrayagg json_objectagg json_table member_of
        find_in_set field elt lcase ucase locate mid space conv bin oct ord insert make_set export_set
        inet_aton inet_ntoa inet6_aton inet6_ntoa is_ipv4 is_ipv6 crc32 sha compress uncompress
        uncompressed_length bit_count st_astext st_aswkt st_x st_y st_distance st_contains st_within
        st_geomfromtext st_srid database schema found_rows row_count last_insert_id connection_id
        regexp_replace regexp_substr regexp_instr weight_string char_length natural_sort_key
    """),
    "bigquery": _COMMON | _names("""
        safe_divide safe_multiply safe_add safe_subtract safe_negate ieee_divide approx_quantiles
        approx_top_count approx_top_sum array_concat_agg datetime_diff datetime_trunc datetime_add
        datetime_sub timestamp_diff timestamp_trunc timestamp_add timestamp_sub time_diff time_trunc
        format_date format_timestamp format_datetime format_time parse_date parse_timestamp parse_datetime
        parse_time unix_seconds unix_millis unix_micros unix_date timestamp_seconds timestamp_millis
        timestamp_micros date_from_unix_date generate_date_array generate_array generate_timestamp_array
        array_reverse array_concat byte_length to_json_string json_extract_array json_query_array
        json_value_array farm_fingerprint to_base64 from_base64 from_hex range_bucket bit_count
        st_geogpoint st_distance st_dwithin st_contains st_within st_intersects st_area st_length
        st_astext st_geogfromtext st_x st_y cosine_distance euclidean_distance offset ordinal safe_offset
        safe_ordinal struct error hll_count.init hll_count.merge hll_count.merge_partial hll_count.extract
    """),
    "snowflake": _COMMON | _names("""
        div0 div0null to_decimal to_numeric to_double to_boolean to_time to_variant to_array to_object
        try_to_decimal try_to_double try_to_boolean try_to_time date_from_parts time_from_parts
        timestamp_from_parts timestamp_ntz_from_parts yearofweek yearofweekiso dayofweekiso weekiso
        sysdate getdate object_construct object_construct_keep_null object_keys object_insert object_agg
        array_flatten array_intersection array_except strtok strtok_to_array split_to_table charindex
        conditional_true_event conditional_change_event booland_agg boolor_agg hll hll_estimate
        variance_samp bitand bitor bitxor get get_path get_ignore_case strip_null_value is_null_value
        check_json as_varchar as_number as_integer as_double as_boolean as_date as_object as_array
        uniform normal zipf seq1 seq2 seq4 seq8 minhash approximate_similarity square time_slice haversine
    """),
}


_STATEMENTS = "shows other sessions' SQL text"
_STATE = "shows the server's state (sessions, locks, replication, memory)"
_SETTINGS = "shows server or role settings, which can hold secrets"
_CREDENTIALS = "shows stored credentials or authentication rules"
_PG_SERVER_STATE = {
    "pg_stat_statements*": _STATEMENTS, "pg_stat_activity": _STATEMENTS, "pg_stat_get_activity": _STATEMENTS,
    "pg_stat_*": _STATE, "pg_statio_*": _STATE, "pg_locks": _STATE, "pg_lock_status": _STATE,
    "pg_blocking_pids": _STATE, "pg_safe_snapshot_blocking_pids": _STATE, "pg_prepared_xacts": _STATE,
    "pg_prepared_xact": _STATE, "pg_replication_slots": _STATE, "pg_backend_memory_contexts": _STATE,
    "pg_get_backend_memory_contexts": _STATE, "pg_shmem_allocations": _STATE, "pg_get_shmem_allocations": _STATE,
    "pg_settings": _SETTINGS, "pg_show_all_settings": _SETTINGS, "pg_file_settings": _SETTINGS,
    "pg_show_all_file_settings": _SETTINGS, "pg_db_role_setting": _SETTINGS, "pg_config": _SETTINGS,
    "current_setting": _SETTINGS,
    "pg_hba_file_rules": _CREDENTIALS, "pg_ident_file_mappings": _CREDENTIALS, "pg_shadow": _CREDENTIALS,
    "pg_authid": _CREDENTIALS, "pg_user_mapping*": _CREDENTIALS, "pg_subscription": _CREDENTIALS,
}
SERVER_STATE: dict[str, dict[str, str]] = {
    "postgres": _PG_SERVER_STATE,
    "duckdb": {**_PG_SERVER_STATE, "duckdb_settings": _SETTINGS, "duckdb_secrets": _CREDENTIALS,
               "which_secret": _CREDENTIALS, "duckdb_databases": _STATE, "duckdb_temporary_files": _STATE,
               "duckdb_memory": _STATE, "duckdb_extensions": _STATE, "pragma_database_list": _STATE},
}
# Job and query history, by (bare name, a qualifier that must be present).
_HISTORY_QUALIFIERS = frozenset({"information_schema", "account_usage", "organization_usage",
                                 "reader_account_usage"})
_WAREHOUSE_HISTORY = {"jobs": _STATEMENTS, "jobs_by_*": _STATEMENTS, "jobs_timeline*": _STATEMENTS,
                      "query_history*": _STATEMENTS, "access_history": _STATEMENTS, "login_history*": _CREDENTIALS,
                      "sessions*": _STATE, "session_*": _STATE}


def server_state_reason(name: str, qualifier: str, dialect: str, *, call: bool) -> str | None:
    """Why a relation (``call=False``) or function (lower-case bare name, dotted qualifier) is server state."""
    for pattern, reason in SERVER_STATE.get(dialect, {}).items():
        if fnmatchcase(name, pattern):
            return reason
    if dialect in ("bigquery", "snowflake"):
        qualified = bool(_HISTORY_QUALIFIERS & set(qualifier.split(".")))
        for pattern, reason in _WAREHOUSE_HISTORY.items():
            # Snowflake's QUERY_HISTORY() table functions need no qualifier; a table called jobs or sessions does.
            if fnmatchcase(name, pattern) and (qualified or (call and pattern.endswith("history*"))):
                return reason
    return None


def denied_reason(name: str, dialect: str) -> str | None:
    """Why a built-in denial applies to this lower-case bare function name, or None."""
    for pattern, reason in (DENIED | DENIED_BY_DIALECT.get(dialect, {})).items():
        if fnmatchcase(name, pattern):
            return reason
    return None


def allowed_names(dialect: str) -> frozenset[str]:
    """The built-in allow-list of read-only functions sqlglot does not type, for one dialect."""
    return ALLOWED.get(dialect, _COMMON)
