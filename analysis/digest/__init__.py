"""The weekly digest: a week's CI test time against the week before, and what grew most."""
