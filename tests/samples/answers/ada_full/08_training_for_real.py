# based on: solutions
# ada_full answers every exercise with the solution (solutions/, marker lines removed).
