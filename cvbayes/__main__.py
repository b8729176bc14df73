from .cli import main

# guarded: Dask's worker processes (cvbayes fit --workers) import this module again
if __name__ == "__main__":
    main()
