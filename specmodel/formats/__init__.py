"""The project's files, each a typed pydantic model with one reader and one writer.

``calibration``: what the model runs on (and the embedded presets);
``run_record``: what the real decoder measured; ``export``: the configuration
for the serving engine and the decoder; ``jsonio``: the one JSON reader and
the one atomic writer every format uses; ``paper_presets``: how the presets
derived from the papers' tables were computed.
"""

DEFAULT_DATASET = "gsm_symbolic"
"""The reasoning-gym dataset problems come from unless a phase, a run or a command says
otherwise (``--dataset``): the one owner of the default (here, so that the CLI names it
without loading the formats)."""
