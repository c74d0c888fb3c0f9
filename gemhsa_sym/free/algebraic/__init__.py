"""P(m, w) by elimination or by guessing from series, its discriminant, edges and atoms."""
