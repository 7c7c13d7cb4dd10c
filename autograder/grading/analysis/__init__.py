"""What a graded class's answers say beyond its scores: similarity between students, mistakes per exercise."""
