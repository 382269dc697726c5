"""The scheduling and binding cycles: pop, filter, score, assume, reserve, permit, bind."""
