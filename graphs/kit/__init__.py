"""The kit every agent graph is built from (the kit floor, ``docs/architecture.md``): the run's context and scope
(:mod:`.context`), graph assembly (:mod:`.assembly`), the one-turn verifier graph (:mod:`.one_turn`) and the
search loop the searching agents share (:mod:`.search_loop`). The agents' own graphs sit beside this folder, one
module per agent (``graphs/<agent>.py``, ``graphs/<agent>_*.py``)."""
