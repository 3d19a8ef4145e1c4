"""CoCoEval's sources, in the order of the ``source`` column's class ids, each with the setting the
simulation prompt describes (a module of its own: the builder, the schema and the metric read it, and the
metric must not import the readers)."""

SETTINGS = {
    "qmsum_product": "a product design team meeting (AMI corpus): the team designs a new remote control",
    "qmsum_academic": "a research group's weekly meeting (ICSI meeting corpus)",
    "qmsum_committee": "a parliamentary committee meeting (Welsh Parliament or Canadian House of Commons)",
    "iq2": "an Oxford-style public debate (Intelligence Squared US): two teams argue for and against a motion",
    "sim": "a recorded group meeting (SIM, Topic-Conversation Relevance dataset)",
    "ncpc": "a public commission meeting (NCPC, Topic-Conversation Relevance dataset)",
}
