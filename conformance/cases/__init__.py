"""Case files to checked ``Case`` objects, their inputs and the oracle's outputs: everything that is the same on every
execution provider.

``load`` and ``load_file`` read YAML safely within ``limits``; ``fields``, ``parse``, ``parse_tensor`` and ``sweep``
make frozen cases, of the keys ``keys`` lists (``schema`` renders them as the JSON Schema editors read). What the stage
knows of one operator is its module's, named after the operator (``top_k1``, ...): a ``CaseOperator``
(``case_operator``) with its descriptor's keys and reader, its spec page's rules, its tensors, its oracle and its
memory figure; ``operators`` is their table, the one module of the stage that names every operator. ``validate``
(with ``validate_checker``) applies the spec pages, ``validate_layout`` DirectML's buffer-tensor rules to the tensors'
layouts (``layouts``: each tensor's Sizes, DataType, Strides and buffer, derived once when parse builds a case, which
carries them); ``generate`` (with ``generate_kinds`` and ``generate_streams``) makes the inputs; ``oracle`` calls
``reference/``; ``fingerprint`` hashes inputs; ``parameters`` describes a descriptor for reports; ``memory`` what a
case holds and its estimated memory (--max-run-elements, --max-case-bytes); ``suite`` finds, reads, filters and shards
case files, ``ids`` says how case ids name a file (from its repository's root, not the working directory), and
``detect`` tells a case file from other YAML met while walking a directory (the pytest plugin's rule too).
``decisions`` names the refusals the harness adds where the spec is silent (a problem says which it enforces).

May import: the core, reference.
"""
