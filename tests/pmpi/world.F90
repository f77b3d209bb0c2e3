! SPDX-License-Identifier: Apache-2.0
! MPI_COMM_WORLD substitution seen from Fortran (the handle 0 is converted in the wrappers): world rank 0
! stays out, the others form `sub` in reverse order and publish it (through world_shim.c, which calls
! MALLEO_Set_world when the library is preloaded). MPI_COMM_WORLD must then have sub's size and ranks,
! and an Allreduce over it must leave rank 0 out. Prints "world ok" or a FAIL line.
program world
  use mpi
  implicit none
  integer :: ierr, rank, size, sub, color, r, n, total, failures
  failures = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  color = 0
  if (rank == 0) color = MPI_UNDEFINED
  call MPI_Comm_split(MPI_COMM_WORLD, color, size - rank, sub, ierr)
  if (rank /= 0) then
    call world_shim_set(sub)
    call MPI_Comm_rank(MPI_COMM_WORLD, r, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, n, ierr)
    if (n /= size - 1 .or. r /= size - 1 - rank) then
      print '(a,i0,a,i0,a,i0)', 'FAIL world rank ', rank, ': size ', n, ' rank ', r
      failures = failures + 1
    end if
    call MPI_Allreduce(rank, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (total /= size * (size - 1) / 2) then
      print '(a,i0,a,i0)', 'FAIL world rank ', rank, ': Allreduce gave ', total
      failures = failures + 1
    end if
    call world_shim_set(MPI_COMM_NULL)
    call MPI_Comm_free(sub, ierr)
  end if
  call MPI_Comm_size(MPI_COMM_WORLD, n, ierr)
  if (n /= size) then
    print '(a,i0,a)', 'FAIL world rank ', rank, ': MPI_COMM_WORLD not whole again'
    failures = failures + 1
  end if
  if (failures == 0) print '(a,i0)', 'world ok ', rank
  call MPI_Finalize(ierr)
  if (failures /= 0) stop 1
end program world
