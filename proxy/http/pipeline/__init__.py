"""The request pipeline: check, authenticate, read, analyse, choose."""
